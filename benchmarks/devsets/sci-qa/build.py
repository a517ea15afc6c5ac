#!/usr/bin/env python3
"""Rebuild sci-qa/articles/*.txt and sci-qa/questions.csv from source/ori_pqal.json (PubMedQA PQA-L).

Each document is a topic collection of PubMed abstracts (one abstract per paragraph); each
question is the question-form title of one of its abstracts. Topics are defined by the
MeSH descriptors in TOPICS below; an abstract goes to the first topic any of its
descriptors matches.

Standard library only and deterministic (the same source gives byte-identical files); run as
``devset_files.build_main`` says.
"""
import json
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from devset_files import build_main, questions_csv  # noqa: E402

SOURCE = HERE / "source" / "ori_pqal.json"
MIN_ABSTRACTS = 5    # a topic needs at least this many abstracts to become a document
MAX_ABSTRACTS = 20   # per document: the first ones in source order

# (document title, regular expression over MeSH descriptor names), in priority order:
# an abstract goes to the first topic one of its descriptors matches in full.
# Age groups, sex, study designs, statistics and places are deliberately not topics.
TOPICS = [
    ("Breast cancer", r"Breast Neoplasms.*|Carcinoma, Ductal, Breast|Mastectomy.*|Mammography"),
    ("Prostate, bladder and kidney cancer", r"Prostatic Neoplasms|Prostatectomy|Prostate-Specific Antigen|Prostate"
                                            r"|Urinary Bladder Neoplasms|Kidney Neoplasms|Carcinoma, Renal Cell"
                                            r"|Testicular Neoplasms"),
    ("Lung cancer", r"Lung Neoplasms|Carcinoma, Non-Small-Cell Lung|Small Cell Lung Carcinoma|Carcinoma, Small Cell"),
    ("Colorectal cancer", r"Colorectal Neoplasms|Rectal Neoplasms|Colonic Neoplasms|Colonic Polyps"
                          r"|Adenomatous Polyposis Coli|Colectomy|Colonoscopy"),
    ("Stomach, oesophagus and pancreas cancer", r"Stomach Neoplasms|Esophageal Neoplasms|Pancreatic Neoplasms|Gastrectomy"
                                                r"|Pancreaticoduodenectomy|Gallbladder Neoplasms"),
    ("Liver disease and liver cancer", r"Liver Neoplasms|Carcinoma, Hepatocellular|Liver Cirrhosis.*|Hepatectomy"
                                       r"|Hepatitis.*|Liver Transplantation|Liver Function Tests|Fatty Liver"),
    ("Gynaecological cancers", r"Uterine Cervical Neoplasms|Ovarian Neoplasms|Endometrial Neoplasms|Uterine Neoplasms"
                               r"|Genital Neoplasms, Female|Papanicolaou Test|Vaginal Smears"),
    ("Head and neck, skin and thyroid cancer", r"Head and Neck Neoplasms|Thyroid Neoplasms|Laryngeal Neoplasms"
                                               r"|Mouth Neoplasms|Melanoma|Skin Neoplasms|Carcinoma, Squamous Cell"),
    ("Stroke", r"Stroke|Stroke Rehabilitation|Brain Ischemia|Cerebral Infarction|Cerebrovascular Disorders"
               r"|Carotid Stenosis|Endarterectomy, Carotid"),
    ("Coronary heart disease", r"Myocardial Infarction|Coronary Disease|Coronary Artery Disease|Myocardial Ischemia"
                               r"|Acute Coronary Syndrome|Angina Pectoris.*|Angioplasty.*"
                               r"|Percutaneous Coronary Intervention|Coronary Angiography"),
    ("Heart surgery and heart valves", r"Cardiac Surgical Procedures|Coronary Artery Bypass.*|Heart Valve Prosthesis.*"
                                       r"|Aortic Valve.*|Mitral Valve.*|Cardiopulmonary Bypass|Aortic Aneurysm.*"
                                       r"|Heart Defects, Congenital"),
    ("Heart rhythm and heart failure", r"Atrial Fibrillation|Arrhythmias, Cardiac|Heart Failure|Catheter Ablation"
                                       r"|Electrocardiography|Echocardiography.*|Ventricular Function, Left"),
    ("Hypertension and blood pressure", r"Hypertension.*|Blood Pressure Determination|Blood Pressure Monitoring, Ambulatory"
                                        r"|Antihypertensive Agents"),
    ("Diabetes", r"Diabetes Mellitus.*|Diabetes, Gestational|Diabetes Complications|Diabetic .*|Blood Glucose"
                 r"|Glycated Hemoglobin A|Insulin|Insulin Resistance|Hypoglycemic Agents|Metformin"
                 r"|Glucose Tolerance Test"),
    ("Obesity and weight-loss surgery", r"Obesity.*|Overweight|Bariatric Surgery|Gastric Bypass|Weight Loss"),
    ("Pregnancy and childbirth", r"Pregnancy.*|Cesarean Section|Prenatal Care|Delivery, Obstetric|Labor, Obstetric"
                                 r"|Pre-Eclampsia|Ultrasonography, Prenatal|Premature Birth|Postpartum Period"
                                 r"|Fetus|Placenta|Fetal Diseases|Midwifery"),
    ("Newborn and preterm infants", r"Infant, Premature.*|Infant, Very Low Birth Weight|Intensive Care Units, Neonatal"
                                    r"|Birth Weight|Apgar Score|Infant, Newborn, Diseases"),
    ("Asthma, lung disease and sleep apnoea", r"Asthma|Pulmonary Disease, Chronic Obstructive|Respiratory Function Tests"
                                              r"|Forced Expiratory Volume|Lung Diseases.*|Bronchoscopy"
                                              r"|Respiratory Sounds|Sleep Apnea.*"
                                              r"|Continuous Positive Airway Pressure|Polysomnography"),
    ("Infections and antibiotics", r"HIV Infections|Tuberculosis.*|Influenza, Human|Anti-Bacterial Agents"
                                   r"|Microbial Sensitivity Tests|Bacteremia|Staphylococcal Infections"
                                   r"|Staphylococcus aureus|Streptococcal Infections|Cross Infection"
                                   r"|Sexually Transmitted Diseases|Urinary Tract Infections|Antitubercular Agents"
                                   r"|Vaccination"),
    ("Depression and mental health", r"Depression|Depressive Disorder.*|Bipolar Disorder|Schizophrenia|Mental Disorders"
                                     r"|Suicide.*|Anxiety.*|Psychotic Disorders|Antidepressive Agents"
                                     r"|Stress, Psychological|Somatoform Disorders|Psychiatric Status Rating Scales"),
    ("Dementia, epilepsy and the nervous system", r"Dementia|Alzheimer Disease|Cognition Disorders|Epilepsy"
                                                  r"|Parkinson Disease|Multiple Sclerosis|Brain Neoplasms"
                                                  r"|Neurosurgical Procedures|Spinal Cord Injuries|Brain Concussion"
                                                  r"|Brain Injuries"),
    ("Smoking, alcohol and drug use", r"Smoking.*|Alcohol Drinking|Alcoholism|Substance-Related Disorders|Tobacco.*|Ethanol"),
    ("Trauma and injury", r"Wounds and Injuries|Wounds, Nonpenetrating|Injury Severity Score|Trauma Severity Indices"
                          r"|Trauma Centers|Accidents, Traffic|Glasgow Coma Scale|Athletic Injuries"),
    ("Fractures, bones and joint replacement", r"Fractures, Bone|Hip Fractures|Femoral Fractures|Spinal Fractures"
                                               r"|Fracture Fixation.*|Arthroplasty, Replacement.*|Knee Prosthesis"
                                               r"|Osteoarthritis.*|Bone Nails|Bone Screws|Knee Joint|Knee Injuries"
                                               r"|Anterior Cruciate Ligament Reconstruction|Shoulder Joint"
                                               r"|Accidental Falls|Bone Density|Osteoporosis.*"),
    ("Spine and back pain", r"Low Back Pain|Neck Pain|Spinal Fusion|Lumbar Vertebrae|Cervical Vertebrae|Scoliosis"
                            r"|Intervertebral Disc.*"),
    ("Digestive diseases and abdominal surgery", r"Laparoscopy|Cholecystectomy.*|Appendicitis|Appendectomy|Hernia.*"
                                                 r"|Herniorrhaphy|Gastroesophageal Reflux|Crohn Disease|Colitis.*"
                                                 r"|Inflammatory Bowel Diseases|Celiac Disease|Pancreatitis"
                                                 r"|Gallbladder Diseases|Digestive System Surgical Procedures"
                                                 r"|Endoscopy.*"),
    ("Kidney disease and transplantation", r"Kidney Failure.*|Kidney Transplantation|Renal Dialysis|Renal Insufficiency.*"
                                           r"|Creatinine|Glomerular Filtration Rate|Kidney Function Tests|Nephrectomy"),
    ("Pain and anaesthesia", r"Pain|Pain Measurement|Pain, Postoperative|Anesthetics, Local|Analgesics.*|Analgesia.*"
                             r"|Anesthesia.*"),
    ("Intensive and emergency care", r"Intensive Care Units|Critical Care|Critical Illness|Respiration, Artificial"
                                     r"|Emergency Service, Hospital|Emergency Medical Services|Emergency Medicine"
                                     r"|Emergency Treatment|Resuscitation|Hospital Mortality"),
    ("Medical education and training", r"Internship and Residency|Clinical Competence|Students, Medical"
                                       r"|Education, Medical.*|Curriculum|Clinical Clerkship|Educational Measurement"
                                       r"|Teaching"),
    ("Primary care and general practice", r"Family Practice|Physicians, Family|Primary Health Care|General Practice"
                                          r"|Referral and Consultation|Office Visits"),
    ("Health services, costs and access to care", r"Health Services Accessibility|Healthcare Disparities"
                                                  r"|Health Status Disparities|Medicaid|Medicare|Insurance.*"
                                                  r"|Health Care Costs|Cost-Benefit Analysis|Costs and Cost Analysis"
                                                  r"|Health Expenditures|Hospital Costs|Quality of Health Care"
                                                  r"|Quality Indicators, Health Care"),
    ("Older people", r"Geriatric Assessment|Frail Elderly|Nursing Homes|Homes for the Aged|Aging"
                     r"|Activities of Daily Living"),
    ("Animal experiments", r"Animals|Rats.*|Mice.*|Swine|Rabbits|Dogs|Guinea Pigs|Cattle|Disease Models, Animal"
                           r"|Models, Animal|In Vitro Techniques"),
]


def clean(text):
    """NFC, whitespace runs (the source has a few double spaces) to one space, trimmed."""
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip()


def file_stem(title):
    """Title -> file name without .txt: spaces to '_', characters unsafe in file names to '_'."""
    return re.sub(r'[\s/\\:*?"<>|]+', "_", title)


def abstract_text(entry):
    """The abstract as one paragraph: its sections in order (labels dropped), then its conclusion."""
    return clean(" ".join(entry["CONTEXTS"] + [entry["LONG_ANSWER"]]))


def assign(data):
    """topic title -> PMIDs in source order (each PMID in at most one topic)."""
    rules = [(title, re.compile(pattern)) for title, pattern in TOPICS]
    topics = {title: [] for title, _ in TOPICS}
    for pmid, entry in data.items():
        for title, rule in rules:
            if any(rule.fullmatch(mesh) for mesh in entry["MESHES"]):
                topics[title].append(pmid)
                break
    return topics


def build():
    data = json.loads(SOURCE.read_text(encoding="utf-8"))  # dict in file order (PMID -> entry)
    files, rows = {}, []
    for title, pmids in assign(data).items():
        if len(pmids) < MIN_ABSTRACTS:
            continue
        pmids = pmids[:MAX_ABSTRACTS]
        stem = file_stem(title)
        name = f"articles/{stem}.txt"
        assert name not in files and len(stem) <= 80, name
        files[name] = title + "\n\n" + "\n\n".join(abstract_text(data[p]) for p in pmids) + "\n"
        for index, pmid in enumerate(pmids):
            entry = data[pmid]
            rows.append([stem, clean(entry["QUESTION"]), entry["final_decision"], "", "", name, pmid, index])
    rows.sort(key=lambda r: r[0])  # by document (stable: paragraph order)
    files["questions.csv"] = questions_csv(rows)
    return files


if __name__ == "__main__":
    sys.exit(build_main(HERE, build, "documents"))
